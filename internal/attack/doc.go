// Package attack holds the station's adversarial suite: the attack classes
// A–I (isolation, host matching, resolution, redirects, files, subprocess, the host
// boundary, resources, manifests) expressed as data (one table entry per case)
// and run through the probe module against a real station, asserting both
// the outcome and that nothing happened on the outside — no connection
// accepted by a fixture that should not see one, files byte-for-byte
// unchanged, every denial attributed to the calling module, and the station,
// the other modules and the station's own clients still working afterwards.
//
// Cases that demonstrate a known, not yet closed hole are kept in tables
// marked knownHole and skipped with the description.
package attack
