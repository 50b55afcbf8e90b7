#!/usr/bin/env bun
/** Entry point of the `switchyard` executable: `serve` (default) or an admin subcommand. */
import { runCli } from "./cli/index";

process.exitCode = await runCli(process.argv.slice(2));
