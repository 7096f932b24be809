CREATE TABLE `notification_preferences` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`connection_id` text NOT NULL,
	`event_type` text NOT NULL,
	`channel` text NOT NULL,
	`is_enabled` integer NOT NULL,
	`recipients` text NOT NULL,
	`metadata` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`connection_id`) REFERENCES `connections`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `notification_preferences_pair_uq` ON `notification_preferences` (`connection_id`,`event_type`,`channel`);--> statement-breakpoint
CREATE TABLE `notification_sends` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`connection_id` text NOT NULL,
	`preference_id` text NOT NULL,
	`event_id` text NOT NULL,
	`event_type` text NOT NULL,
	`run_id` text NOT NULL,
	`channel` text NOT NULL,
	`recipient` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`error` text,
	`provider_id` text,
	`message` text NOT NULL,
	`sent_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `notification_sends_event_uq` ON `notification_sends` (`event_id`,`preference_id`,`recipient`);--> statement-breakpoint
CREATE INDEX `notification_sends_workspace_created_idx` ON `notification_sends` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `notification_sends_run_idx` ON `notification_sends` (`run_id`);