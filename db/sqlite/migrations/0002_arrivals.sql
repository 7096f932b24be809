CREATE TABLE `arrivals` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`connection_id` text NOT NULL,
	`transport` text NOT NULL,
	`filename` text,
	`path` text,
	`size` integer,
	`outcome` text NOT NULL,
	`reason` text,
	`run_ids` text NOT NULL,
	`metadata` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `arrivals_connection_created_idx` ON `arrivals` (`connection_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `arrivals_workspace_created_idx` ON `arrivals` (`workspace_id`,`created_at`);