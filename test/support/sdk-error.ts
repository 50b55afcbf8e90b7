/** The error a request fails with (the SDKs' promises are lazy thenables, so await them here). */
export async function errorOf(p: PromiseLike<unknown>): Promise<any> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("expected the request to fail");
}
