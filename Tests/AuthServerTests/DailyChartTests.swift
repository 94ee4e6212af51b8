import Foundation
import Testing

@testable import AuthServer

/// The console's charts: drawn on the server as SVG, with every number also in a table, and nothing a strict
/// Content-Security-Policy would block.
@Suite struct DailyChartTests {
    static let chart = DailyChart(
        title: "Sign-ins per day",
        days: ["2026-11-22", "2026-11-23", "2026-11-24"],
        series: [
            .init(name: "native", counts: [3, 0, 12]),
            .init(name: "web <b>", counts: [1, 2, 5]),
        ]
    )

    @Test func theAxisTopIsARoundNumberAtOrAboveTheHighestStack() {
        #expect(Self.chart.axisTop == 20)  // 12 + 5 = 17
        #expect(DailyChart(title: "t", days: ["d"], series: [.init(name: "a", counts: [100])]).axisTop == 100)
        #expect(DailyChart(title: "t", days: ["d"], series: [.init(name: "a", counts: [101])]).axisTop == 200)
        #expect(DailyChart(title: "t", days: ["d"], series: [.init(name: "a", counts: [0])]).axisTop == 1)
    }

    @Test func barsAreProportionalAndNamedInTheirTooltips() {
        let svg = Self.chart.svg
        // 200 px of plot height; the top is 20: 12 native → 120 px, 5 web → 50 px on the last day.
        #expect(svg.contains("height=\"120\""))
        #expect(svg.contains("height=\"50\""))
        #expect(svg.contains("<title>2026-11-24: native 12</title>"))
        #expect(svg.contains("<title>2026-11-23: web &lt;b&gt; 2</title>"), "names are escaped")
        // A zero draws nothing (no zero-height bar).
        #expect(!svg.contains("2026-11-23: native"))
        #expect(svg.contains("role=\"img\""))
        #expect(svg.contains("Totals: native 15, web &lt;b&gt; 8."))
    }

    @Test func everyNumberIsInTheTableNewestDayFirst() {
        let table = Self.chart.table
        let rows = table.components(separatedBy: "<tr>").dropFirst(2)  // the head's row, then the days
        #expect(rows.count == 3)
        #expect(rows.first?.hasPrefix("<th scope=\"row\">2026-11-24</th><td>12</td><td>5</td><td>17</td>") == true)
        #expect(rows.last?.hasPrefix("<th scope=\"row\">2026-11-22</th><td>3</td><td>1</td><td>4</td>") == true)
        #expect(table.contains("<th scope=\"col\">web &lt;b&gt;</th>"))
    }

    @Test func theLegendNamesEverySeriesWithItsPattern() {
        let legend = Self.chart.legend
        #expect(legend.contains("fill=\"url(#chart-sign-ins-per-day-fill0)\"") && legend.contains(" native</li>"))
        #expect(legend.contains("fill=\"url(#chart-sign-ins-per-day-fill1)\""))
        // Each series' pattern differs in shape, not only in colour.
        #expect(Set(DailyChart.fills.map(\.pattern)).count == DailyChart.fills.count)
    }

    @Test func nothingTheConsolesPolicyWouldBlock() {
        for markup in [Self.chart.svg, Self.chart.legend, Self.chart.table] {
            #expect(!markup.contains("style="), "an inline style attribute needs 'unsafe-inline'")
            #expect(!markup.contains("<script"))
            #expect(!markup.contains("href=\"http"), "no external asset")
        }
    }

    @Test func noDaysOrNoSeriesStillDraws() {
        let empty = DailyChart(title: "Empty", days: [], series: [])
        #expect(empty.svg.contains("</svg>"))
        #expect(empty.description == "Per day, no days. Totals: none.")
        #expect(
            DailyChart(title: "Short", days: ["a", "b"], series: [.init(name: "s", counts: [1])]).table.contains(
                "<th scope=\"row\">b</th><td>0</td><td>0</td>"
            )
        )
    }
}
