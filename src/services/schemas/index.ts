export { createSchema } from "./create-schema";
export { deleteSchema } from "./delete-schema";
export { getSchema } from "./get-schema";
export { listSchemas } from "./list-schemas";
export { presentSchema } from "./record";
export { updateSchema } from "./update-schema";
export * from "./shapes";
export { inferSchema } from "./infer-schema";
export * from "./infer-shapes";
