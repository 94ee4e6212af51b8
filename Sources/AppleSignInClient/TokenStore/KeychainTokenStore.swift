#if canImport(Security)
import Foundation
import Security

/// A token store in the Keychain: one generic-password item, readable only on this device and only after the first
/// unlock by default (so that background refreshes work, and backups to other devices do not carry the tokens).
///
/// On macOS it uses the data-protection Keychain, like iOS. Share `accessGroup` to let an app extension use the same
/// session (give the extension its own `SiwaClient`; the client reads the store once at first use).
public struct KeychainTokenStore: TokenStore {
    /// When the item may be read.
    public enum Accessibility: Sendable {
        /// After the first unlock since boot, this device only (the default: background refresh works).
        case afterFirstUnlockThisDeviceOnly
        /// While the device is unlocked, this device only.
        case whenUnlockedThisDeviceOnly

        var attribute: CFString {
            switch self {
            case .afterFirstUnlockThisDeviceOnly: return kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            case .whenUnlockedThisDeviceOnly: return kSecAttrAccessibleWhenUnlockedThisDeviceOnly
            }
        }
    }

    /// `kSecAttrService` of the item, usually the bundle id.
    public let service: String
    /// `kSecAttrAccount` of the item.
    public let account: String
    /// `kSecAttrAccessGroup`, to share the item with app extensions; nil for the app's default group.
    public let accessGroup: String?
    /// When the item may be read.
    public let accessibility: Accessibility

    /// A store in the generic-password item `service`/`account`.
    /// - Parameters:
    ///   - service: the item's service, usually the bundle id.
    ///   - account: the item's account name.
    ///   - accessGroup: a Keychain access group shared with extensions, or nil.
    ///   - accessibility: when the item may be read.
    public init(
        service: String,
        account: String = "siwa-session",
        accessGroup: String? = nil,
        accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly
    ) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
        self.accessibility = accessibility
    }

    public func read() throws -> TokenStoreContents {
        var query = itemQuery()
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        switch status {
        case errSecSuccess:
            guard let data = item as? Data else {
                throw SiwaClientError(.tokenStore, "the Keychain item holds no data")
            }
            return try TokenStoreContents.decode(data)
        case errSecItemNotFound:
            return .empty
        default:
            throw SiwaClientError(.tokenStore, "Keychain read failed (OSStatus \(status))")
        }
    }

    public func write(_ contents: TokenStoreContents) throws {
        guard contents != .empty else {
            let status = SecItemDelete(itemQuery() as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw SiwaClientError(.tokenStore, "Keychain delete failed (OSStatus \(status))")
            }
            return
        }
        let attributes: [String: Any] = [
            kSecValueData as String: try contents.encoded(),
            kSecAttrAccessible as String: accessibility.attribute,
        ]
        var status = SecItemUpdate(itemQuery() as CFDictionary, attributes as CFDictionary)
        if status == errSecItemNotFound {
            let item = itemQuery().merging(attributes) { _, new in new }
            status = SecItemAdd(item as CFDictionary, nil)
        }
        guard status == errSecSuccess else {
            throw SiwaClientError(.tokenStore, "Keychain write failed (OSStatus \(status))")
        }
    }

    /// The attributes that identify the item.
    private func itemQuery() -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
            kSecUseDataProtectionKeychain as String: true,
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }
}
#endif
