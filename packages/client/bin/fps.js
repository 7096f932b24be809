#!/usr/bin/env node
// The `fps` command: committed, so that npm links it at install time (dist/ is built after linking, by the postinstall).
import { main } from "../dist/cli.js";

main(process.argv.slice(2)).then((code) => process.exit(code));
