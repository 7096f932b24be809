CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`webhook_id` text NOT NULL,
	`event_id` text NOT NULL,
	`event_type` text NOT NULL,
	`pipeline_run_id` text NOT NULL,
	`url` text NOT NULL,
	`attempt` integer NOT NULL,
	`trigger` text NOT NULL,
	`success` integer NOT NULL,
	`status_code` integer,
	`duration_ms` integer NOT NULL,
	`response_excerpt` text,
	`error` text,
	`created_at` integer NOT NULL,
	`next_attempt_at` integer,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_attempt_idx` ON `webhook_deliveries` (`webhook_id`,`event_id`,`attempt`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_workspace_created_idx` ON `webhook_deliveries` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_run_idx` ON `webhook_deliveries` (`pipeline_run_id`);--> statement-breakpoint
CREATE TABLE `webhook_events` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`type` text NOT NULL,
	`pipeline_run_id` text NOT NULL,
	`body` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_events_workspace_created_idx` ON `webhook_events` (`workspace_id`,`created_at`);--> statement-breakpoint
ALTER TABLE `webhooks` ADD `description` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `kind` text DEFAULT 'WEBHOOK' NOT NULL;