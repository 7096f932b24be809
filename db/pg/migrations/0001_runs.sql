CREATE TABLE "pipeline_runs" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"pipeline_id" text NOT NULL,
	"pipeline_name" text NOT NULL,
	"connection_id" text NOT NULL,
	"connection_name" text NOT NULL,
	"schema_id" text NOT NULL,
	"direction" text NOT NULL,
	"status" text NOT NULL,
	"source" text NOT NULL,
	"filename" text NOT NULL,
	"path" text NOT NULL,
	"size" bigint NOT NULL,
	"mimetype" text NOT NULL,
	"original_key" text NOT NULL,
	"processed_key" text,
	"rejects_key" text,
	"metadata" json NOT NULL,
	"error_message" text,
	"attempt" integer NOT NULL,
	"idempotency_key" text,
	"processed_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "pipeline_runs" ADD CONSTRAINT "pipeline_runs_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "pipeline_runs_workspace_created_idx" ON "pipeline_runs" USING btree ("workspace_id","created_at");--> statement-breakpoint
CREATE INDEX "pipeline_runs_pipeline_created_idx" ON "pipeline_runs" USING btree ("pipeline_id","created_at");--> statement-breakpoint
CREATE INDEX "pipeline_runs_workspace_status_idx" ON "pipeline_runs" USING btree ("workspace_id","status");--> statement-breakpoint
CREATE UNIQUE INDEX "pipeline_runs_idempotency_uq" ON "pipeline_runs" USING btree ("workspace_id","idempotency_key");