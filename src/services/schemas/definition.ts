import Ajv, { type ErrorObject } from "ajv";
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { AppError } from "../../domain/errors";

/**
 * A schema's `definition` is a JSON Schema describing one row. It is checked
 * against its meta-schema (draft 2020-12 unless `$schema` names draft-07),
 * then compiled, so that bad references and patterns are caught on save
 * rather than on the first file.
 */
const DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema";
const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/;

const options = { strict: false, allErrors: false, validateFormats: true } as const;
const ajv2020 = addFormats(new Ajv2020(options));
const ajv07 = addFormats(new Ajv(options));

/**
 * Compiling registers the definition (and every `$id` inside it) in the Ajv
 * instance, so a shared instance would let one workspace's schema resolve
 * another's `$ref`, refuse a second definition (or a re-save) with the same
 * `$id`, and grow with every save. Each check compiles in its own instance
 * (well under a millisecond). Ajv only warns about an unknown `format`; here
 * the warning is an error, since formats are asserted and a typo would
 * otherwise switch the check off silently.
 */
function compileAlone(definition: Record<string, unknown>, draft07: boolean): void {
  let ajv: Ajv | undefined;
  const logger = {
    log() {},
    error() {},
    warn(...args: unknown[]) {
      const text = args.map(String).join(" ");
      const unknown = /^unknown format "(.*)" ignored in schema at path "#?(.*)"$/.exec(text);
      if (!unknown) throw new Error(text);
      const at = unknown[2]!
        .split("/")
        .filter(Boolean)
        .map((s) => `.${s.replace(/~1/g, "/").replace(/~0/g, "~")}`)
        .join("");
      fail(`definition${at}.format: unknown format '${unknown[1]}'; known formats: ${Object.keys(ajv?.formats ?? {}).join(", ")}`);
    },
  };
  const own = { ...options, validateSchema: false, logger };
  ajv = draft07 ? addFormats(new Ajv(own)) : addFormats(new Ajv2020(own));
  ajv.compile(definition);
}

function pathOf(e: ErrorObject): string {
  const segs = e.instancePath.split("/").slice(1).map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
  return ["definition", ...segs].map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : i === 0 ? s : `.${s}`)).join("");
}

function fail(message: string): never {
  throw new AppError("invalid_input", message);
}

function pickValidator(definition: Record<string, unknown>) {
  const declared = definition.$schema;
  if (declared === undefined || declared === DRAFT_2020 || declared === `${DRAFT_2020}#`) return ajv2020;
  if (typeof declared === "string" && DRAFT_07.test(declared)) return ajv07;
  return fail(`definition.$schema: unsupported meta-schema '${String(declared)}'; use ${DRAFT_2020} or http://json-schema.org/draft-07/schema#`);
}

export function checkDefinition(definition: Record<string, unknown>): void {
  const ajv = pickValidator(definition);
  if (!ajv.validateSchema(definition)) {
    const e = ajv.errors?.[0];
    const allowed = (e?.params as { allowedValues?: unknown[] } | undefined)?.allowedValues;
    const detail = allowed ? ` (${allowed.map((v) => JSON.stringify(v)).join(", ")})` : "";
    fail(e ? `${pathOf(e)}: ${e.message ?? "is not valid JSON Schema"}${detail}` : "definition: is not a valid JSON Schema");
  }
  if (definition.type !== "object") fail("definition.type: must be 'object' (a schema describes one row)");
  const props = definition.properties;
  if (props === undefined || props === null || typeof props !== "object" || Array.isArray(props)) {
    fail("definition.properties: is required and must be an object of column schemas");
  }
  const required = definition.required;
  if (required !== undefined) {
    (required as string[]).forEach((name, i) => {
      if (!Object.hasOwn(props as object, name)) fail(`definition.required[${i}]: '${name}' is not one of definition.properties`);
    });
  }
  try {
    compileAlone(definition, ajv === ajv07);
  } catch (e) {
    if (e instanceof AppError) throw e;
    fail(`definition: ${(e as Error).message}`);
  }
}
