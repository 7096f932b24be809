CREATE TABLE "arrivals" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"connection_id" text NOT NULL,
	"transport" text NOT NULL,
	"filename" text,
	"path" text,
	"size" bigint,
	"outcome" text NOT NULL,
	"reason" text,
	"run_ids" json NOT NULL,
	"metadata" json NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "arrivals" ADD CONSTRAINT "arrivals_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "arrivals_connection_created_idx" ON "arrivals" USING btree ("connection_id","created_at");--> statement-breakpoint
CREATE INDEX "arrivals_workspace_created_idx" ON "arrivals" USING btree ("workspace_id","created_at");