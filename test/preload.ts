// Loaded before every test file (bunfig.toml): the zod message configuration
// the service installs at start-up, so tests see the same messages.
import "../src/domain/validation";
