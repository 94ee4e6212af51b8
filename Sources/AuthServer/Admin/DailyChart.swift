/// Counts per day drawn on the server as an inline SVG bar chart, for the operator console: no script, no external
/// asset, no `style` attribute (the pages' Content-Security-Policy allows one stylesheet by hash; SVG presentation
/// attributes are not styles). Readable without colour: every series has its own fill pattern as well as its colour,
/// a legend names them, each bar segment carries its numbers as a tooltip (`<title>`), and ``table`` gives every number
/// as text beside the chart.
struct DailyChart: Sendable {
    /// One stacked series: a count for each of the chart's days.
    struct Series: Sendable {
        var name: String
        var counts: [Int]
    }

    /// Names the chart (the SVG's accessible name and the table's caption).
    var title: String
    /// One label per day, oldest first (`2026-11-24`).
    var days: [String]
    var series: [Series]

    /// Fills, in order of the series: a colour and a pattern each, so that neighbours differ in both.
    static let fills: [(colour: String, pattern: String)] = [
        ("#0066cc", "solid"), ("#b3261e", "diagonal"), ("#1e7f3c", "dots"), ("#8a4baf", "cross"),
        ("#b36b00", "horizontal"), ("#515154", "vertical"),
    ]

    private static let width = 720
    private static let height = 240
    private static let left = 44
    private static let bottom = 28
    private static let top = 12
    private static let right = 8

    /// The highest stacked total, and a round top for the axis at or above it.
    var axisTop: Int {
        let highest = days.indices.map { day in series.reduce(0) { $0 + max(0, $1.count(day)) } }.max() ?? 0
        guard highest > 0 else { return 1 }
        var step = 1
        while step * 10 < highest { step *= 10 }
        for multiple in [1, 2, 5, 10] where step * multiple >= highest { return step * multiple }
        return step * 10
    }

    /// The chart as an `<svg>` element (escaped; safe to put in a page).
    var svg: String {
        let id = Self.identifier(title)
        let plotWidth = Double(Self.width - Self.left - Self.right)
        let plotHeight = Double(Self.height - Self.top - Self.bottom)
        let slot = days.isEmpty ? plotWidth : plotWidth / Double(days.count)
        let barWidth = max(1, slot * 0.7)
        let top = axisTop
        var out = """
            <svg class="chart" viewBox="0 0 \(Self.width) \(Self.height)" width="100%" role="img" \
            aria-labelledby="\(id)-title \(id)-desc" xmlns="http://www.w3.org/2000/svg">
            <title id="\(id)-title">\(HTMLPage.escape(title))</title>
            <desc id="\(id)-desc">\(HTMLPage.escape(description))</desc>
            <defs>\(patterns(id))</defs>

            """
        // Grid and axis labels: 0, half and top, whole numbers only (counts have no halves: a top of 1 or 5 has no
        // middle line).
        for fraction in top.isMultiple(of: 2) ? [0.0, 0.5, 1.0] : [0.0, 1.0] {
            let y = Double(Self.top) + plotHeight * (1 - fraction)
            let value = Int((Double(top) * fraction).rounded())
            out += """
                <line x1="\(Self.left)" x2="\(Self.width - Self.right)" y1="\(Self.format(y))" y2="\(Self.format(y))" \
                stroke="#d2d2d7" stroke-width="1"/>\
                <text x="\(Self.left - 6)" y="\(Self.format(y + 4))" text-anchor="end" font-size="11" \
                fill="#515154">\(value)</text>

                """
        }
        let labelEvery = max(1, Int((Double(days.count) / 6).rounded(.up)))
        for (index, day) in days.enumerated() {
            let x = Double(Self.left) + slot * Double(index) + (slot - barWidth) / 2
            var base = Double(Self.top) + plotHeight
            for (number, item) in series.enumerated() {
                let count = max(0, item.count(index))
                guard count > 0 else { continue }
                let barHeight = plotHeight * Double(count) / Double(top)
                base -= barHeight
                out += """
                    <rect x="\(Self.format(x))" y="\(Self.format(base))" width="\(Self.format(barWidth))" \
                    height="\(Self.format(barHeight))" fill="url(#\(id)-fill\(number % Self.fills.count))" \
                    stroke="#1d1d1f" stroke-width="0.5"><title>\(HTMLPage.escape("\(day): \(item.name) \(count)"))\
                    </title></rect>

                    """
            }
            if index % labelEvery == 0 || index == days.count - 1 {
                out += """
                    <text x="\(Self.format(x + barWidth / 2))" y="\(Self.height - 8)" text-anchor="middle" \
                    font-size="11" fill="#515154">\(HTMLPage.escape(Self.shortDay(day)))</text>

                    """
            }
        }
        out += "</svg>\n"
        return out
    }

    /// The legend: each series' swatch (its pattern) and name.
    var legend: String {
        let id = Self.identifier(title)
        let items = series.enumerated().map { number, item in
            """
            <li><svg width="14" height="14" aria-hidden="true" xmlns="http://www.w3.org/2000/svg">\
            <rect width="14" height="14" fill="url(#\(id)-fill\(number % Self.fills.count))" stroke="#1d1d1f" \
            stroke-width="0.5"/></svg> \(HTMLPage.escape(item.name))</li>
            """
        }
        return "<ul class=\"legend\">\(items.joined())</ul>"
    }

    /// Every number of the chart as a table: a row per day (newest first), a column per series and the total.
    var table: String {
        let head = series.map { "<th scope=\"col\">\(HTMLPage.escape($0.name))</th>" }.joined()
        var rows = ""
        for index in days.indices.reversed() {
            let counts = series.map { max(0, $0.count(index)) }
            let cells = counts.map { "<td>\($0)</td>" }.joined()
            rows += """
                <tr><th scope="row">\(HTMLPage.escape(days[index]))</th>\(cells)\
                <td>\(counts.reduce(0, +))</td></tr>

                """
        }
        return """
            <table class="numbers"><caption>\(HTMLPage.escape(title)): the numbers</caption>
            <thead><tr><th scope="col">day</th>\(head)<th scope="col">total</th></tr></thead>
            <tbody>
            \(rows)</tbody></table>
            """
    }

    /// What the chart shows, in words (the SVG's description).
    var description: String {
        let totals = series.map { item in "\(item.name) \(item.counts.reduce(0) { $0 + max(0, $1) })" }
        let range = days.isEmpty ? "no days" : "\(days[0]) to \(days[days.count - 1])"
        return "Per day, \(range). Totals: \(totals.isEmpty ? "none" : totals.joined(separator: ", "))."
    }

    private func patterns(_ id: String) -> String {
        Self.fills.enumerated().map { number, fill in
            let mark: String
            switch fill.pattern {
            case "diagonal": mark = "<path d=\"M0 8 L8 0\" stroke=\"#fff\" stroke-width=\"2\"/>"
            case "dots": mark = "<circle cx=\"4\" cy=\"4\" r=\"1.6\" fill=\"#fff\"/>"
            case "cross": mark = "<path d=\"M0 0 L8 8 M8 0 L0 8\" stroke=\"#fff\" stroke-width=\"1.2\"/>"
            case "horizontal": mark = "<path d=\"M0 4 L8 4\" stroke=\"#fff\" stroke-width=\"2\"/>"
            case "vertical": mark = "<path d=\"M4 0 L4 8\" stroke=\"#fff\" stroke-width=\"2\"/>"
            default: mark = ""
            }
            return """
                <pattern id="\(id)-fill\(number)" width="8" height="8" patternUnits="userSpaceOnUse">\
                <rect width="8" height="8" fill="\(fill.colour)"/>\(mark)</pattern>
                """
        }.joined()
    }

    /// An id for the chart's elements made of its title's letters and digits.
    static func identifier(_ title: String) -> String {
        let letters = title.lowercased().unicodeScalars.map { scalar in
            (("a"..."z").contains(scalar) || ("0"..."9").contains(scalar)) ? Character(scalar) : "-"
        }
        return "chart-" + String(letters)
    }

    /// `2026-11-24` → `11-24`.
    static func shortDay(_ day: String) -> String {
        day.count == 10 ? String(day.dropFirst(5)) : day
    }

    static func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

extension DailyChart.Series {
    /// The count of day `index`, 0 when the series is shorter.
    func count(_ index: Int) -> Int { index < counts.count ? counts[index] : 0 }
}
