CREATE TABLE "pipeline_versions" (
	"pipeline_id" text NOT NULL,
	"version" integer NOT NULL,
	"workspace_id" text NOT NULL,
	"reason" text NOT NULL,
	"changes" json NOT NULL,
	"mappings" json NOT NULL,
	"schema_id" text NOT NULL,
	"schema_updated_at" timestamp (3) with time zone NOT NULL,
	"schema_definition" json NOT NULL,
	"created_by" json,
	"request_id" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "pipeline_versions_pipeline_id_version_pk" PRIMARY KEY("pipeline_id","version")
);
--> statement-breakpoint
ALTER TABLE "pipelines" ADD COLUMN "version" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "pipeline_runs" ADD COLUMN "pipeline_version" integer;--> statement-breakpoint
ALTER TABLE "pipeline_runs" ADD COLUMN "reprocess_of" text;--> statement-breakpoint
ALTER TABLE "pipeline_versions" ADD CONSTRAINT "pipeline_versions_pipeline_id_pipelines_id_fk" FOREIGN KEY ("pipeline_id") REFERENCES "public"."pipelines"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pipeline_versions" ADD CONSTRAINT "pipeline_versions_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "pipeline_versions_workspace_idx" ON "pipeline_versions" USING btree ("workspace_id");--> statement-breakpoint
-- Each existing pipeline gets version 1: its mappings and its schema as they stand (docs/decisions/pipeline-versions.md).
INSERT INTO "pipeline_versions" ("pipeline_id", "version", "workspace_id", "reason", "changes", "mappings", "schema_id", "schema_updated_at", "schema_definition", "created_by", "request_id", "created_at")
SELECT p."id", 1, p."workspace_id", 'migrated', '{"fields":[]}'::json, p."mappings", p."schema_id", s."updated_at", s."definition", NULL, NULL, p."updated_at"
FROM "pipelines" p JOIN "schemas" s ON s."id" = p."schema_id";
