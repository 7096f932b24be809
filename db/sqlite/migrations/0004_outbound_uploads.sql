CREATE TABLE `outbound_upload_parts` (
	`upload_id` text NOT NULL,
	`part_number` integer NOT NULL,
	`row_count` integer NOT NULL,
	`size` integer NOT NULL,
	`etag` text NOT NULL,
	`received_at` integer NOT NULL,
	PRIMARY KEY(`upload_id`, `part_number`),
	FOREIGN KEY (`upload_id`) REFERENCES `outbound_uploads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `outbound_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`connection_id` text NOT NULL,
	`connection_name` text NOT NULL,
	`pipeline_id` text NOT NULL,
	`pipeline_name` text NOT NULL,
	`status` text NOT NULL,
	`total_parts` integer NOT NULL,
	`filename` text NOT NULL,
	`output_filename` text NOT NULL,
	`output_format` text NOT NULL,
	`run_id` text,
	`error_message` text,
	`expires_at` integer NOT NULL,
	`ended_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `outbound_uploads_status_expires_idx` ON `outbound_uploads` (`status`,`expires_at`);--> statement-breakpoint
CREATE INDEX `outbound_uploads_workspace_created_idx` ON `outbound_uploads` (`workspace_id`,`created_at`);