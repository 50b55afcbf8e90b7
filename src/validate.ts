/**
 * Request validation with TypeBox schemas. The first violation becomes a 400 that names the
 * field the way OpenAI does ("messages[0].role") and states the rule.
 */
import { type TSchema, type Static } from "@sinclair/typebox";
import { Value, ValueErrorType, type ValueError } from "@sinclair/typebox/value";
import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { DomainError, missingField } from "./errors";

/** JSON pointer "/messages/0/role" → "messages[0].role". */
export function paramName(pointer: string): string {
  let out = "";
  for (const part of pointer.split("/").slice(1)) {
    const p = part.replace(/~1/g, "/").replace(/~0/g, "~");
    out += /^\d+$/.test(p) ? `[${p}]` : out ? `.${p}` : p;
  }
  return out;
}

function describe(e: ValueError): string {
  const s = e.schema as Record<string, unknown>;
  switch (e.type) {
    case ValueErrorType.String: return "must be a string";
    case ValueErrorType.Number: return "must be a number";
    case ValueErrorType.Integer: return "must be an integer";
    case ValueErrorType.Boolean: return "must be a boolean";
    case ValueErrorType.Array: return "must be an array";
    case ValueErrorType.Object: return "must be an object";
    case ValueErrorType.StringMinLength: return s.minLength === 1 ? "must not be empty" : `must be at least ${s.minLength} characters long`;
    case ValueErrorType.StringMaxLength: return `must be at most ${s.maxLength} characters long`;
    case ValueErrorType.ArrayMinItems: return s.minItems === 1 ? "must not be empty" : `must have at least ${s.minItems} items`;
    case ValueErrorType.ArrayMaxItems: return `must have at most ${s.maxItems} items`;
    case ValueErrorType.NumberMinimum: case ValueErrorType.IntegerMinimum: return `must be at least ${s.minimum}`;
    case ValueErrorType.NumberMaximum: case ValueErrorType.IntegerMaximum: return `must be at most ${s.maximum}`;
    case ValueErrorType.NumberExclusiveMinimum: case ValueErrorType.IntegerExclusiveMinimum: return `must be greater than ${s.exclusiveMinimum}`;
    case ValueErrorType.Literal: return `must be ${JSON.stringify(s.const)}`;
    case ValueErrorType.Union: {
      const options = (s.anyOf as Record<string, unknown>[] | undefined)?.map((o) => o.const).filter((c) => c !== undefined);
      if (options && options.length) return `must be one of ${options.map((o) => JSON.stringify(o)).join(", ")}`;
      return typeof s.description === "string" ? `must be ${s.description}` : "has the wrong type or shape";
    }
    case ValueErrorType.ObjectAdditionalProperties: return "is not a recognised field";
    default: return e.message.replace(/^Expected/, "must be").toLowerCase();
  }
}

/**
 * Schemas compiled once to a checking function: every request is validated, and walking the
 * error iterator for valid bodies was a measurable share of the gateway's time per request.
 */
const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();

function checker(schema: TSchema): TypeCheck<TSchema> {
  let c = compiled.get(schema);
  if (!c) {
    c = TypeCompiler.Compile(schema);
    compiled.set(schema, c);
  }
  return c;
}

/** Returns the body typed by the schema, or throws a 400 naming the first bad field. */
export function validate<S extends TSchema>(schema: S, body: unknown, prefix = ""): Static<S> {
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new DomainError("invalid_request", "invalid_request_error", "The request body must be a JSON object.");
  }
  if (checker(schema).Check(body)) return body as Static<S>;
  const first = Value.Errors(schema, body).First();
  if (!first) return body as Static<S>;
  const param = prefix + paramName(first.path);
  if (first.type === ValueErrorType.ObjectRequiredProperty) throw missingField(param);
  throw new DomainError("invalid_request", "invalid_value", `Invalid '${param}': ${describe(first)}.`, param || null);
}
