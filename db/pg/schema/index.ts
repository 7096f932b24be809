export * from "./workspaces";
export * from "./api-keys";
export * from "./sftp-servers";
export * from "./connections";
export * from "./schemas";
export * from "./pipelines";
export * from "./webhooks";
export * from "./pipeline-runs";
