CREATE TABLE "sftp_pickups" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"connection_id" text NOT NULL,
	"remote_path" text NOT NULL,
	"size" bigint NOT NULL,
	"mtime" bigint NOT NULL,
	"first_seen_at" timestamp (3) with time zone NOT NULL,
	"taken_at" timestamp (3) with time zone,
	"outcome" text,
	"run_ids" json NOT NULL,
	"arrival_id" text,
	"moved_to" text,
	"move_error" text
);
--> statement-breakpoint
ALTER TABLE "sftp_servers" ADD COLUMN "processed_folder" text;--> statement-breakpoint
ALTER TABLE "sftp_pickups" ADD CONSTRAINT "sftp_pickups_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sftp_pickups" ADD CONSTRAINT "sftp_pickups_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "sftp_pickups_version_uq" ON "sftp_pickups" USING btree ("connection_id","remote_path","size","mtime");--> statement-breakpoint
CREATE INDEX "sftp_pickups_connection_taken_idx" ON "sftp_pickups" USING btree ("connection_id","taken_at");