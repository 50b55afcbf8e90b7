/**
 * Every route describes itself here once; the same table drives the OpenAPI document at
 * /docs/openapi.json, the readable /docs page and the 405 (wrong method) answers.
 */
import type { TSchema } from "@sinclair/typebox";

export interface RouteDoc {
  method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  path: string;
  summary: string;
  auth: "key" | "admin" | "none";
  body?: TSchema;
  /** Response content type when not JSON. */
  produces?: string;
  /** Listed in the root status document's `endpoints`. */
  public?: boolean;
}

export class RouteDocs {
  readonly routes: RouteDoc[] = [];

  add(doc: RouteDoc): void {
    this.routes.push(doc);
  }

  /** Methods served at a concrete path ("/admin/keys/key_1" matches "/admin/keys/:id"). */
  methodsAt(pathname: string): string[] {
    return this.routes.filter((r) => pathPattern(r.path).test(pathname)).map((r) => r.method);
  }
}

function pathPattern(path: string): RegExp {
  return new RegExp("^" + path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[a-zA-Z_]+/g, "[^/]+") + "/?$");
}
