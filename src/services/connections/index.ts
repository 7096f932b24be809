export { createConnection } from "./create-connection";
export { deleteConnection } from "./delete-connection";
export { getConnection } from "./get-connection";
export { listConnections } from "./list-connections";
export { presentConnection } from "./present";
export { testConnection } from "./test-connection";
export { updateConnection } from "./update-connection";
export * from "./shapes";
