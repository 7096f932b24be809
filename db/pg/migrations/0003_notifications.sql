CREATE TABLE "notification_preferences" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"connection_id" text NOT NULL,
	"event_type" text NOT NULL,
	"channel" text NOT NULL,
	"is_enabled" boolean NOT NULL,
	"recipients" json NOT NULL,
	"metadata" json,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notification_sends" (
	"id" text PRIMARY KEY NOT NULL,
	"workspace_id" text NOT NULL,
	"connection_id" text NOT NULL,
	"preference_id" text NOT NULL,
	"event_id" text NOT NULL,
	"event_type" text NOT NULL,
	"run_id" text NOT NULL,
	"channel" text NOT NULL,
	"recipient" text NOT NULL,
	"status" text NOT NULL,
	"attempts" integer NOT NULL,
	"error" text,
	"provider_id" text,
	"message" json NOT NULL,
	"sent_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "notification_preferences" ADD CONSTRAINT "notification_preferences_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_preferences" ADD CONSTRAINT "notification_preferences_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_sends" ADD CONSTRAINT "notification_sends_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "notification_preferences_pair_uq" ON "notification_preferences" USING btree ("connection_id","event_type","channel");--> statement-breakpoint
CREATE UNIQUE INDEX "notification_sends_event_uq" ON "notification_sends" USING btree ("event_id","preference_id","recipient");--> statement-breakpoint
CREATE INDEX "notification_sends_workspace_created_idx" ON "notification_sends" USING btree ("workspace_id","created_at");--> statement-breakpoint
CREATE INDEX "notification_sends_run_idx" ON "notification_sends" USING btree ("run_id");