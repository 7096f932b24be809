export { findInboxes, type Inbox, isInboxAddress, normalizeAddress } from "./inboxes";
export { EMAIL_FOLDER, type EmailReceipt, type ReceiveEmailOptions, receiveEmail } from "./receive";
export { attachmentFormat, attachmentName, senderAllowed, subjectMatches } from "./rules";
