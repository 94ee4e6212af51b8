#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The text log's time stamps are local time, from the C library's `localtime`. With `TZ` unset, glibc's `localtime`
/// looks at `/etc/localtime` again on every call to see whether it changed: a `stat` system call for every log line,
/// about 2% of a sign-in's CPU under load (the `fstatat` in its profile, user and kernel side). With `TZ` naming that
/// same file, glibc reads it once and the time stamps are the same.
///
/// So `siwa` sets `TZ=:/etc/localtime` at start-up when `TZ` is unset; a `TZ` the operator set is left as it is. The
/// one difference: a change to `/etc/localtime` while siwa runs shows in the text log after a restart. The JSON log
/// writes UTC and never reads the time zone.
public enum LocalTimeZone {
    /// The `TZ` to set, given the current one: the system's zone file when `TZ` is unset, nothing otherwise.
    static func setting(current: String?) -> String? {
        current == nil ? ":/etc/localtime" : nil
    }

    /// Sets `TZ` as ``setting(current:)`` says. The `siwa` executable calls it as its first statement, on the main
    /// thread before its first `await`, so before siwa's own threads (event loops, the SQLite writer, Swift's pool)
    /// start: `setenv` is not safe while another thread reads the environment.
    public static func pin() {
        guard let value = setting(current: getenv("TZ").map { String(cString: $0) }) else { return }
        setenv("TZ", value, 0)
    }
}
