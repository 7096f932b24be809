CREATE TABLE `pipeline_versions` (
	`pipeline_id` text NOT NULL,
	`version` integer NOT NULL,
	`workspace_id` text NOT NULL,
	`reason` text NOT NULL,
	`changes` text NOT NULL,
	`mappings` text NOT NULL,
	`schema_id` text NOT NULL,
	`schema_updated_at` integer NOT NULL,
	`schema_definition` text NOT NULL,
	`created_by` text,
	`request_id` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`pipeline_id`, `version`),
	FOREIGN KEY (`pipeline_id`) REFERENCES `pipelines`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `pipeline_versions_workspace_idx` ON `pipeline_versions` (`workspace_id`);--> statement-breakpoint
ALTER TABLE `pipelines` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `pipeline_runs` ADD `pipeline_version` integer;--> statement-breakpoint
ALTER TABLE `pipeline_runs` ADD `reprocess_of` text;--> statement-breakpoint
-- Each existing pipeline gets version 1: its mappings and its schema as they stand (docs/decisions/pipeline-versions.md).
INSERT INTO `pipeline_versions` (`pipeline_id`, `version`, `workspace_id`, `reason`, `changes`, `mappings`, `schema_id`, `schema_updated_at`, `schema_definition`, `created_by`, `request_id`, `created_at`)
SELECT p.`id`, 1, p.`workspace_id`, 'migrated', '{"fields":[]}', p.`mappings`, p.`schema_id`, s.`updated_at`, s.`definition`, NULL, NULL, p.`updated_at`
FROM `pipelines` p JOIN `schemas` s ON s.`id` = p.`schema_id`;
