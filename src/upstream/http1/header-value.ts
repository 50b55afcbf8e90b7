/**
 * What an HTTP header value the gateway sends must not hold (RFC 9110 5.5): a control character
 * other than HTAB (CR, LF and NUL among them), or a character past latin-1. Start-up refuses keys
 * that hold one (config.ts, upstream/routes-config.ts); the client refuses to write one (client.ts).
 */
export const HEADER_VALUE_UNSAFE = /[\x00-\x08\x0a-\x1f\x7f]|[^\x00-\xff]/;

/** The rule, as a ConfigError states it. */
export const HEADER_VALUE_RULE = "must not contain control characters (CR, LF, NUL and the like) or characters outside latin-1";
