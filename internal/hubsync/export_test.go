package hubsync

// RelayEvents is relayEvents, for the tests of what the relay follower
// reports.
var RelayEvents = relayEvents
