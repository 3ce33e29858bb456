// Test-only: `node --import ./hide-packages.mjs` makes the packages named in
// OUTBOXKIT_TEST_HIDE_PACKAGES (comma-separated) unresolvable, with the same error Node throws for
// a package that is not installed (ERR_MODULE_NOT_FOUND, "Cannot find package 'x' imported from y").
// Registered after tsx, so its hook runs first.
import { register } from 'node:module'

const hidden = (process.env.OUTBOXKIT_TEST_HIDE_PACKAGES ?? '').split(',').filter(Boolean)
register('./hide-packages-hooks.mjs', { parentURL: import.meta.url, data: { hidden } })
