import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { paramName, validate } from "./validate";
import { DomainError } from "./errors";

const Schema = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(Type.Object({ role: Type.String(), content: Type.String() }), { minItems: 1 }),
  speed: Type.Optional(Type.Number({ minimum: 0.25, maximum: 4 })),
  format: Type.Optional(Type.Union([Type.Literal("mp3"), Type.Literal("wav")])),
});

function errorOf(body: unknown): DomainError {
  try {
    validate(Schema, body);
  } catch (e) {
    return e as DomainError;
  }
  throw new Error("expected a validation error");
}

describe("validate", () => {
  test("paramName", () => {
    expect(paramName("/messages/0/role")).toBe("messages[0].role");
    expect(paramName("/model")).toBe("model");
    expect(paramName("")).toBe("");
  });
  test.each([
    [{ messages: [{ role: "user", content: "x" }] }, "model", /Missing required parameter: 'model'/],
    [{ model: 1, messages: [] }, "model", /'model': must be a string/],
    [{ model: "m", messages: [] }, "messages", /'messages': must not be empty/],
    [{ model: "m", messages: [{ content: "x" }] }, "messages[0].role", /Missing required parameter: 'messages\[0\].role'/],
    [{ model: "m", messages: [{ role: "u", content: "x" }], speed: 5 }, "speed", /must be at most 4/],
    [{ model: "m", messages: [{ role: "u", content: "x" }], format: "ogg" }, "format", /must be one of "mp3", "wav"/],
  ] as const)("%j → %s", (body, param, message) => {
    const e = errorOf(body);
    expect(e.kind).toBe("invalid_request");
    expect(e.param).toBe(param);
    expect(e.message).toMatch(message);
  });
  test("non-object bodies", () => {
    expect(errorOf([1]).message).toMatch(/JSON object/);
    expect(errorOf(undefined).message).toMatch(/JSON object/);
  });
});
