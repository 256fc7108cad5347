package host

// CheckBinary is checkBinary and BinaryStats what it measures, for the
// external tests.
var CheckBinary = checkBinary

type BinaryStats = binaryStats
