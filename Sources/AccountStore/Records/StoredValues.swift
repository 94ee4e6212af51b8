#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// How the stores keep a few values, written once for the records and the in-memory store.

extension String {
    /// The text cut to its first `length` Unicode scalars.
    func cut(toScalars length: Int) -> String {
        unicodeScalars.count <= length ? self : String(String.UnicodeScalarView(unicodeScalars.prefix(length)))
    }
}

extension Date {
    /// The time as stores keep it: milliseconds since 1970, rounded.
    var storedMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1_000).rounded()) }
}
