ALTER TABLE `connections` ADD `pgp_private_key_enc` text;--> statement-breakpoint
ALTER TABLE `connections` ADD `pgp_passphrase_enc` text;--> statement-breakpoint
ALTER TABLE `connections` ADD `pgp_partner_public_key` text;