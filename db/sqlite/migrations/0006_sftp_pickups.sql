CREATE TABLE `sftp_pickups` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`connection_id` text NOT NULL,
	`remote_path` text NOT NULL,
	`size` integer NOT NULL,
	`mtime` integer NOT NULL,
	`first_seen_at` integer NOT NULL,
	`taken_at` integer,
	`outcome` text,
	`run_ids` text NOT NULL,
	`arrival_id` text,
	`moved_to` text,
	`move_error` text,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`connection_id`) REFERENCES `connections`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sftp_pickups_version_uq` ON `sftp_pickups` (`connection_id`,`remote_path`,`size`,`mtime`);--> statement-breakpoint
CREATE INDEX `sftp_pickups_connection_taken_idx` ON `sftp_pickups` (`connection_id`,`taken_at`);--> statement-breakpoint
ALTER TABLE `sftp_servers` ADD `processed_folder` text;