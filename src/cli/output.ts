/** What a CLI command prints on success: its result as indented JSON on stdout. */
export function print(value: unknown): void {
  process.stdout.write(JSON.stringify(value, null, 2) + "\n");
}
