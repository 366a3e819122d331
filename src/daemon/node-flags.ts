// Node flags the daemon is started with where ollamats starts it (the systemd unit, the launchd
// plist; a manual `ollamats serve` can pass them in NODE_OPTIONS). V8 reads the heap's shape only
// when the process starts: set later, from inside, it has no effect.
//
// --max-semi-space-size=64: under load (64 clients, ~200 requests/s on 2 cores) most of what a
// request allocates dies young, but the default young generation fills every few milliseconds
// and promotes what is still in flight, so old-space collections come often and each holds the
// event loop. Measured with the load-fault suite: `GET /` p99 130-156 ms without, 24 ms with,
// and 25% more requests served. Idle, the young generation stays small (serve sets its growth
// factor to 1; it grows only under allocation pressure).
export const DAEMON_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=64"];
