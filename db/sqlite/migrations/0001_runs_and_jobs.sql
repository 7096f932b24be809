CREATE TABLE `pipeline_runs` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`pipeline_id` text NOT NULL,
	`pipeline_name` text NOT NULL,
	`connection_id` text NOT NULL,
	`connection_name` text NOT NULL,
	`schema_id` text NOT NULL,
	`direction` text NOT NULL,
	`status` text NOT NULL,
	`source` text NOT NULL,
	`filename` text NOT NULL,
	`path` text NOT NULL,
	`size` integer NOT NULL,
	`mimetype` text NOT NULL,
	`original_key` text NOT NULL,
	`processed_key` text,
	`rejects_key` text,
	`metadata` text NOT NULL,
	`error_message` text,
	`attempt` integer NOT NULL,
	`idempotency_key` text,
	`processed_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `pipeline_runs_workspace_created_idx` ON `pipeline_runs` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `pipeline_runs_pipeline_created_idx` ON `pipeline_runs` (`pipeline_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `pipeline_runs_workspace_status_idx` ON `pipeline_runs` (`workspace_id`,`status`);--> statement-breakpoint
CREATE UNIQUE INDEX `pipeline_runs_idempotency_uq` ON `pipeline_runs` (`workspace_id`,`idempotency_key`);--> statement-breakpoint
CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`payload` text NOT NULL,
	`job_key` text,
	`status` text NOT NULL,
	`attempts` integer NOT NULL,
	`max_attempts` integer NOT NULL,
	`run_at` integer NOT NULL,
	`locked_by` text,
	`locked_until` integer,
	`last_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `jobs_ready_idx` ON `jobs` (`status`,`run_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_key_uq` ON `jobs` (`job_key`);