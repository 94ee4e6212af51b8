import AppleSignIn

/// JSON string escaping for hand-written bodies (error bodies are written without an encoder on the hot path).
enum JSONText {
    static func appendString(_ string: String, to out: inout [UInt8]) {
        JSONWriter.appendString(string, to: &out)
    }
}
