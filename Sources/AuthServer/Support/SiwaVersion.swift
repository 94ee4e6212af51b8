/// siwa's version, written here only: `siwa --version` prints it, and a test checks that `CHANGELOG.md`'s newest entry
/// is this version.
public enum SiwaVersion {
    public static let current = "0.4.0"
}
