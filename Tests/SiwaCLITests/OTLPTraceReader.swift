/// A span as an OTLP/HTTP exporter sent it: `ExportTraceServiceRequest` in binary protobuf, read with just enough of
/// protobuf's wire format for the tests (swift-otel's generated types are internal to it). Ids are lowercase hex;
/// every attribute value is given as text.
struct ExportedSpan: Sendable {
    var traceID: String
    var spanID: String
    /// Empty for a root span.
    var parentSpanID: String
    var name: String
    /// OTLP's `SpanKind`: 2 server, 3 client.
    var kind: Int
    var attributes: [String: String]
    /// OTLP's `StatusCode`: 0 unset, 1 ok, 2 error.
    var statusCode: Int
    /// The `service.name` of the resource that sent it.
    var serviceName: String?

    /// Every span of one export request.
    static func spans(inExport body: [UInt8]) throws -> [ExportedSpan] {
        var spans: [ExportedSpan] = []
        for resourceSpans in try ProtobufMessage(body[...]).messages(1) {
            let resource = try resourceSpans.messages(1).first
            let serviceName = try resource.map { try attributes(of: $0, field: 1)["service.name"] } ?? nil
            for scopeSpans in try resourceSpans.messages(2) {
                for span in try scopeSpans.messages(2) {
                    spans.append(
                        ExportedSpan(
                            traceID: hex(span.bytes(1)),
                            spanID: hex(span.bytes(2)),
                            parentSpanID: hex(span.bytes(4)),
                            name: span.string(5) ?? "",
                            kind: Int(span.varint(6) ?? 0),
                            attributes: try attributes(of: span, field: 9),
                            statusCode: Int(try span.messages(15).first?.varint(3) ?? 0),
                            serviceName: serviceName
                        )
                    )
                }
            }
        }
        return spans
    }

    /// `repeated KeyValue` as text: `AnyValue`'s string, bool, int and double; `…` for the others.
    private static func attributes(of message: ProtobufMessage, field: Int) throws -> [String: String] {
        var attributes: [String: String] = [:]
        for pair in try message.messages(field) {
            guard let key = pair.string(1) else { continue }
            let value = try pair.messages(2).first
            if let text = value?.string(1) {
                attributes[key] = text
            } else if let flag = value?.varint(2) {
                attributes[key] = flag == 0 ? "false" : "true"
            } else if let number = value?.varint(3) {
                attributes[key] = String(Int64(bitPattern: number))
            } else if let double = value?.fixed(4) {
                attributes[key] = String(Double(bitPattern: double))
            } else {
                attributes[key] = "…"
            }
        }
        return attributes
    }

    private static func hex(_ bytes: ArraySlice<UInt8>?) -> String {
        (bytes ?? []).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }
}

/// One protobuf message's fields, undecoded: varints, fixed-size numbers and length-delimited bytes by number.
struct ProtobufMessage {
    enum Value {
        case varint(UInt64)
        case fixed(UInt64)
        case bytes(ArraySlice<UInt8>)
    }

    struct Malformed: Error {}

    private(set) var fields: [(number: Int, value: Value)] = []

    init(_ bytes: ArraySlice<UInt8>) throws {
        var index = bytes.startIndex
        func varint() throws -> UInt64 {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard index < bytes.endIndex, shift < 64 else { throw Malformed() }
                let byte = bytes[index]
                index += 1
                result |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return result }
                shift += 7
            }
        }
        func fixed(_ size: Int) throws -> UInt64 {
            guard bytes.endIndex - index >= size else { throw Malformed() }
            var result: UInt64 = 0
            for offset in 0..<size { result |= UInt64(bytes[index + offset]) << (8 * UInt64(offset)) }
            index += size
            return result
        }
        while index < bytes.endIndex {
            let key = try varint()
            let number = Int(key >> 3)
            switch key & 7 {
            case 0: fields.append((number, .varint(try varint())))
            case 1: fields.append((number, .fixed(try fixed(8))))
            case 5: fields.append((number, .fixed(try fixed(4))))
            case 2:
                let length = Int(try varint())
                guard length >= 0, bytes.endIndex - index >= length else { throw Malformed() }
                fields.append((number, .bytes(bytes[index..<index + length])))
                index += length
            default: throw Malformed()
            }
        }
    }

    /// The embedded messages of a (repeated) field.
    func messages(_ number: Int) throws -> [ProtobufMessage] {
        try fields.compactMap { field in
            guard field.number == number, case .bytes(let bytes) = field.value else { return nil }
            return try ProtobufMessage(bytes)
        }
    }

    func bytes(_ number: Int) -> ArraySlice<UInt8>? {
        for field in fields where field.number == number {
            if case .bytes(let bytes) = field.value { return bytes }
        }
        return nil
    }

    func string(_ number: Int) -> String? {
        bytes(number).map { String(decoding: $0, as: UTF8.self) }
    }

    func varint(_ number: Int) -> UInt64? {
        for field in fields where field.number == number {
            if case .varint(let value) = field.value { return value }
        }
        return nil
    }

    func fixed(_ number: Int) -> UInt64? {
        for field in fields where field.number == number {
            if case .fixed(let value) = field.value { return value }
        }
        return nil
    }
}
