// Loaded before every test file (bunfig.toml): the zod message configuration
// the service installs at start-up, so tests see the same messages, and the
// check that fails a test file leaving a server, worker or timer running.
import "../src/domain/validation";
import "./helpers/open-handles";
