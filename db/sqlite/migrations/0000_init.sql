CREATE TABLE `workspaces` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`email` text NOT NULL,
	`default_version` text,
	`features` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`role` text NOT NULL,
	`lookup` text NOT NULL,
	`secret_hash` text NOT NULL,
	`start` text NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_lookup_unique` ON `api_keys` (`lookup`);--> statement-breakpoint
CREATE INDEX `api_keys_workspace_idx` ON `api_keys` (`workspace_id`);--> statement-breakpoint
CREATE TABLE `sftp_servers` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`host` text NOT NULL,
	`port` integer NOT NULL,
	`root_directory` text NOT NULL,
	`inbound_folder` text NOT NULL,
	`outbound_folder` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `connections` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`type` text NOT NULL,
	`use_hosted_sftp` integer NOT NULL,
	`sftp_username` text,
	`sftp_password_enc` text,
	`sftp_private_key_enc` text,
	`sftp_passphrase_enc` text,
	`aws_user_name` text,
	`aws_public_key` text,
	`aws_password_enc` text,
	`ip_whitelist` text NOT NULL,
	`sftp_server_id` text,
	`email_inbound_address` text,
	`email_allowed_formats` text,
	`email_allowed_senders` text,
	`email_subject_filter` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`sftp_server_id`) REFERENCES `sftp_servers`(`id`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE UNIQUE INDEX `connections_email_inbound_address_unique` ON `connections` (`email_inbound_address`);--> statement-breakpoint
CREATE UNIQUE INDEX `connections_workspace_name_uq` ON `connections` (`workspace_id`,lower("name"));--> statement-breakpoint
CREATE UNIQUE INDEX `connections_hosted_username_uq` ON `connections` (`sftp_username`) WHERE "connections"."use_hosted_sftp" = 1;--> statement-breakpoint
CREATE INDEX `connections_server_idx` ON `connections` (`sftp_server_id`);--> statement-breakpoint
CREATE TABLE `schemas` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`definition` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `schemas_workspace_name_uq` ON `schemas` (`workspace_id`,lower("name"));--> statement-breakpoint
CREATE TABLE `pipelines` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`connection_id` text NOT NULL,
	`schema_id` text NOT NULL,
	`direction` text NOT NULL,
	`is_active` integer NOT NULL,
	`mappings` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`connection_id`) REFERENCES `connections`(`id`) ON UPDATE no action ON DELETE restrict,
	FOREIGN KEY (`schema_id`) REFERENCES `schemas`(`id`) ON UPDATE no action ON DELETE restrict
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pipelines_workspace_name_uq` ON `pipelines` (`workspace_id`,lower("name"));--> statement-breakpoint
CREATE INDEX `pipelines_connection_idx` ON `pipelines` (`connection_id`);--> statement-breakpoint
CREATE INDEX `pipelines_schema_idx` ON `pipelines` (`schema_id`);--> statement-breakpoint
CREATE TABLE `pipeline_webhooks` (
	`pipeline_id` text NOT NULL,
	`webhook_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	PRIMARY KEY(`pipeline_id`, `webhook_id`),
	FOREIGN KEY (`pipeline_id`) REFERENCES `pipelines`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `pipeline_webhooks_webhook_idx` ON `pipeline_webhooks` (`webhook_id`);--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`url` text NOT NULL,
	`secret_enc` text NOT NULL,
	`events` text NOT NULL,
	`is_active` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhooks_workspace_idx` ON `webhooks` (`workspace_id`);