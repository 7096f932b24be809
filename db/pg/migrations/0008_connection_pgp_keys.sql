ALTER TABLE "connections" ADD COLUMN "pgp_private_key_enc" text;--> statement-breakpoint
ALTER TABLE "connections" ADD COLUMN "pgp_passphrase_enc" text;--> statement-breakpoint
ALTER TABLE "connections" ADD COLUMN "pgp_partner_public_key" text;