import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { printedSchema } from "./schema";

/** Writes graphql/schema.graphql; test/graphql.schema.test.ts fails when the committed copy drifts. */
writeFileSync(join(import.meta.dir, "schema.graphql"), `${printedSchema()}\n`);
console.log("wrote graphql/schema.graphql");
