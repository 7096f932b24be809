import { AppError } from "../../domain/errors";
import providers from "email-providers/all.json" with { type: "json" };

/**
 * Registration is for company domains. The list of personal e-mail
 * providers is the maintained `email-providers` package (8,700+ domains);
 * a subdomain of a listed domain counts as listed.
 */
const FREE = new Set<string>(providers as string[]);

export function isFreeMailDomain(domain: string): boolean {
  const labels = domain.toLowerCase().replace(/\.$/, "").split(".");
  for (let i = 0; i < labels.length - 1; i++) {
    if (FREE.has(labels.slice(i).join("."))) return true;
  }
  return false;
}

/** The one rule for every way in (CLI workspace:create, dashboard sign-up): company e-mail domains only. */
export function refuseFreeMail(email: string): void {
  const domain = email.split("@")[1]!.toLowerCase();
  if (isFreeMailDomain(domain)) {
    throw new AppError("invalid_input", `email: '${domain}' is a personal e-mail provider; register with your company's e-mail domain`);
  }
}
