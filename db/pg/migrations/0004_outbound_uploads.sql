CREATE TABLE "outbound_upload_parts" (
	"upload_id" text NOT NULL,
	"part_number" integer NOT NULL,
	"row_count" integer NOT NULL,
	"size" bigint NOT NULL,
	"etag" text NOT NULL,
	"received_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "outbound_upload_parts_upload_id_part_number_pk" PRIMARY KEY("upload_id","part_number")
);
--> statement-breakpoint
CREATE TABLE "outbound_uploads" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"connection_id" text NOT NULL,
	"connection_name" text NOT NULL,
	"pipeline_id" text NOT NULL,
	"pipeline_name" text NOT NULL,
	"status" text NOT NULL,
	"total_parts" integer NOT NULL,
	"filename" text NOT NULL,
	"output_filename" text NOT NULL,
	"output_format" text NOT NULL,
	"run_id" text,
	"error_message" text,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"ended_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "outbound_upload_parts" ADD CONSTRAINT "outbound_upload_parts_upload_id_outbound_uploads_id_fk" FOREIGN KEY ("upload_id") REFERENCES "public"."outbound_uploads"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "outbound_uploads" ADD CONSTRAINT "outbound_uploads_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "outbound_uploads_status_expires_idx" ON "outbound_uploads" USING btree ("status","expires_at");--> statement-breakpoint
CREATE INDEX "outbound_uploads_workspace_created_idx" ON "outbound_uploads" USING btree ("workspace_id","created_at");