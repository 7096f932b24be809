CREATE TABLE "workspaces" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"email" text NOT NULL,
	"default_version" text,
	"features" json NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"role" text NOT NULL,
	"lookup" text NOT NULL,
	"secret_hash" text NOT NULL,
	"start" text NOT NULL,
	"last_used_at" timestamp (3) with time zone,
	"revoked_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "api_keys_lookup_unique" UNIQUE("lookup")
);
--> statement-breakpoint
CREATE TABLE "sftp_servers" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"host" text NOT NULL,
	"port" integer NOT NULL,
	"root_directory" text NOT NULL,
	"inbound_folder" text NOT NULL,
	"outbound_folder" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "connections" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"use_hosted_sftp" boolean NOT NULL,
	"sftp_username" text,
	"sftp_password_enc" text,
	"sftp_private_key_enc" text,
	"sftp_passphrase_enc" text,
	"aws_user_name" text,
	"aws_public_key" text,
	"aws_password_enc" text,
	"ip_whitelist" json NOT NULL,
	"sftp_server_id" text,
	"email_inbound_address" text,
	"email_allowed_formats" json,
	"email_allowed_senders" json,
	"email_subject_filter" text,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "connections_email_inbound_address_unique" UNIQUE("email_inbound_address")
);
--> statement-breakpoint
CREATE TABLE "schemas" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"description" text,
	"definition" json NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "pipelines" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"connection_id" text NOT NULL,
	"schema_id" text NOT NULL,
	"direction" text NOT NULL,
	"is_active" boolean NOT NULL,
	"mappings" json NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "pipeline_webhooks" (
	"pipeline_id" text NOT NULL,
	"webhook_id" text NOT NULL,
	"workspace_id" text NOT NULL,
	CONSTRAINT "pipeline_webhooks_pipeline_id_webhook_id_pk" PRIMARY KEY("pipeline_id","webhook_id")
);
--> statement-breakpoint
CREATE TABLE "webhooks" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"name" text NOT NULL,
	"url" text NOT NULL,
	"secret_enc" text NOT NULL,
	"events" json NOT NULL,
	"is_active" boolean NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sftp_servers" ADD CONSTRAINT "sftp_servers_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "connections" ADD CONSTRAINT "connections_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "connections" ADD CONSTRAINT "connections_sftp_server_id_sftp_servers_id_fk" FOREIGN KEY ("sftp_server_id") REFERENCES "public"."sftp_servers"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "schemas" ADD CONSTRAINT "schemas_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pipelines" ADD CONSTRAINT "pipelines_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pipelines" ADD CONSTRAINT "pipelines_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pipelines" ADD CONSTRAINT "pipelines_schema_id_schemas_id_fk" FOREIGN KEY ("schema_id") REFERENCES "public"."schemas"("id") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pipeline_webhooks" ADD CONSTRAINT "pipeline_webhooks_pipeline_id_pipelines_id_fk" FOREIGN KEY ("pipeline_id") REFERENCES "public"."pipelines"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pipeline_webhooks" ADD CONSTRAINT "pipeline_webhooks_webhook_id_webhooks_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhooks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_workspace_idx" ON "api_keys" USING btree ("workspace_id");--> statement-breakpoint
CREATE UNIQUE INDEX "connections_workspace_name_uq" ON "connections" USING btree ("workspace_id",lower("name"));--> statement-breakpoint
CREATE UNIQUE INDEX "connections_hosted_username_uq" ON "connections" USING btree ("sftp_username") WHERE "connections"."use_hosted_sftp" = true;--> statement-breakpoint
CREATE INDEX "connections_server_idx" ON "connections" USING btree ("sftp_server_id");--> statement-breakpoint
CREATE UNIQUE INDEX "schemas_workspace_name_uq" ON "schemas" USING btree ("workspace_id",lower("name"));--> statement-breakpoint
CREATE UNIQUE INDEX "pipelines_workspace_name_uq" ON "pipelines" USING btree ("workspace_id",lower("name"));--> statement-breakpoint
CREATE INDEX "pipelines_connection_idx" ON "pipelines" USING btree ("connection_id");--> statement-breakpoint
CREATE INDEX "pipelines_schema_idx" ON "pipelines" USING btree ("schema_id");--> statement-breakpoint
CREATE INDEX "pipeline_webhooks_webhook_idx" ON "pipeline_webhooks" USING btree ("webhook_id");--> statement-breakpoint
CREATE INDEX "webhooks_workspace_idx" ON "webhooks" USING btree ("workspace_id");