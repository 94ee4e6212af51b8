import AuthServer
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's open-file limit: raised to the hard limit at start-up (systemd's default soft limit is 1,024), and
/// the connection cap kept well below it, so that a connection flood is refused by siwa rather than ending the process
/// when a descriptor cannot be had.
enum DescriptorLimit {
    /// Descriptors kept for everything but client connections: the database pool, Apple's HTTP client, log files.
    static let reserve = 256

    /// Raises the soft limit to the hard one; returns the soft limit in force afterwards (`nil` if unknown).
    @discardableResult
    static func raiseToHard() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur == rlim_t.max ? Int.max : Int(clamping: limit.rlim_cur)
    }

    /// Raises the limit and lowers `limits.maximumConnections` to fit under it, saying so.
    static func apply(to limits: inout AuthServerConfiguration.ConnectionLimits, logger: Logger) {
        guard let soft = raiseToHard() else { return }
        let fits = max(16, soft - reserve)
        if limits.maximumConnections > fits {
            logger.warning(
                "the connection cap is lowered to fit the open-file limit",
                metadata: [
                    "max_connections": "\(fits)", "configured": "\(limits.maximumConnections)",
                    "open_file_limit": "\(soft)",
                ]
            )
            limits.maximumConnections = fits
        }
        logger.debug(
            "open-file limit",
            metadata: ["soft": "\(soft)", "max_connections": "\(limits.maximumConnections)"]
        )
    }
}
