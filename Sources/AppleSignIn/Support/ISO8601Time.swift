/// Times as ISO 8601 text in UTC, written without Foundation's formatters: `2026-11-21T23:39:59Z`, as
/// `JSONEncoder.DateEncodingStrategy.iso8601` writes it, or with milliseconds, `2026-11-21T23:39:59.123Z`. Every
/// account in an answer carries one (`createdAt`), and every JSON log line starts with one.
package enum ISO8601Time {
    /// Appends `seconds` since 1970 (with `milliseconds`, 0–999, when given) as UTC text.
    package static func append(seconds: Int64, milliseconds: Int? = nil, to out: inout [UInt8]) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        if year < 0 { out.append(UInt8(ascii: "-")) }
        if year.magnitude < 10_000 {
            appendDigits(Int64(year.magnitude), count: 4, to: &out)
        } else {
            out.append(contentsOf: String(year.magnitude).utf8)
        }
        out.append(UInt8(ascii: "-"))
        appendDigits(month, count: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendDigits(day, count: 2, to: &out)
        out.append(UInt8(ascii: "T"))
        appendDigits(secondOfDay / 3_600, count: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 3_600 / 60, count: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendDigits(secondOfDay % 60, count: 2, to: &out)
        if let milliseconds {
            precondition((0..<1_000).contains(milliseconds), "milliseconds are 0–999")
            out.append(UInt8(ascii: "."))
            appendDigits(Int64(milliseconds), count: 3, to: &out)
        }
        out.append(UInt8(ascii: "Z"))
    }

    /// `value` (0 ≤ value < 10^count) in `count` digits, with leading zeros.
    private static func appendDigits(_ value: Int64, count: Int, to out: inout [UInt8]) {
        var divisor: Int64 = 1
        for _ in 1..<count { divisor *= 10 }
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }
}
