/// A route the router registered: its method and its path template (`/admin/api/users/{id}`).
struct RegisteredRoute: Hashable, Comparable, CustomStringConvertible {
    var method: String
    var path: String

    var description: String { "\(method) \(path)" }

    static func < (lhs: Self, rhs: Self) -> Bool { (lhs.path, lhs.method) < (rhs.path, rhs.method) }
}
