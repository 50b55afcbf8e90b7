/**
 * Forms whose inputs are named as the API names its fields ("pricing.input_per_million",
 * "routes[0].upstream"), so a 400 naming a field is shown right under that input; an error naming
 * no input on the form is shown above it.
 */
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiFailure } from "./api";

export interface FormError {
  message: string;
  param: string | null;
}

/** The form's error, its setter from a caught error, and whether a field on the form shows it. */
export function useFormError() {
  const [error, setError] = useState<FormError | null>(null);
  const fail = (e: unknown) => setError({ message: (e as Error).message, param: e instanceof ApiFailure ? e.param : null });
  return { error, setError, fail };
}

/** A labelled input slot; the error under it when the API named this field (or one inside it). */
export function Field(props: { name: string; label: string; error: FormError | null; children: unknown }) {
  const mine = props.error?.param != null && (props.error.param === props.name || props.error.param.startsWith(props.name + "."));
  return html`<label data-field=${props.name}>${props.label} ${props.children}
    ${mine ? html`<span class="field-error" role="alert">${props.error!.message}</span>` : null}</label>`;
}

/** The error above the form when no field of `names` shows it. */
export function FormErrorLine(props: { error: FormError | null; names: string[] }) {
  const e = props.error;
  if (!e) return null;
  if (e.param && props.names.some((n) => e.param === n || e.param!.startsWith(n + "."))) return null;
  return html`<p class="error" role="alert">${e.message}</p>`;
}

/** A price as the API shows it (an exact JSON decimal, a number here) back to decimal text for an input. */
export function decimalText(v: number | null | undefined): string {
  if (v === null || v === undefined) return "";
  return v.toFixed(9).replace(/0+$/, "").replace(/\.$/, "");
}

/** The value of a named input of a form ("" when absent). */
export function value(form: HTMLFormElement, name: string): string {
  const el = form.elements.namedItem(name) as HTMLInputElement | null;
  return el ? el.value.trim() : "";
}

export function checked(form: HTMLFormElement, name: string): boolean {
  return (form.elements.namedItem(name) as HTMLInputElement | null)?.checked ?? false;
}

/** A whole number typed into a field: sent as a number, or the text as typed (the API names the rule). */
export function whole(text: string): number | string {
  return /^\d+$/.test(text) ? Number(text) : text;
}

/** A ref for an editor that scrolls it into view when it opens (the Edit button may be far below it). */
export function useShownOnOpen() {
  const ref = useRef<HTMLFormElement>(null);
  useEffect(() => {
    ref.current?.scrollIntoView?.({ block: "nearest" });
  }, []);
  return ref;
}
