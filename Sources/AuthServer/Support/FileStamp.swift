#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What tells a reload that a file has something new: its inode (a file replaced by rename is a new one), when it was
/// last changed, and its size.
struct FileStamp: Equatable, Sendable {
    var inode: UInt64
    var modified: Date
    var size: Int

    /// The stamp of the file at `path`; `nil` while it cannot be read.
    init?(_ path: String) {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let modified = attributes[.modificationDate] as? Date, let size = attributes[.size] as? Int
        else { return nil }
        let inode = attributes[.systemFileNumber]
        self.inode = (inode as? UInt64) ?? (inode as? Int).map { UInt64(clamping: $0) } ?? 0
        self.modified = modified
        self.size = size
    }
}
