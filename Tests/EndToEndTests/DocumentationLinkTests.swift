import Foundation
import XCTest

/// The repository's documentation as a product: every relative link in the Markdown a reader opens first resolves
/// to a file of the repository, nothing points outside a clone, and the README stays short.
final class DocumentationLinkTests: XCTestCase {
    /// The repository's root, found from this file's place in it.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The Markdown files checked: the README, CONTRIBUTING, docs/ and the benchmarks' table.
    static func documents() throws -> [URL] {
        var documents = ["README.md", "CONTRIBUTING.md", "Benchmarks/README.md"].map { root.appendingPathComponent($0) }
        let docs = root.appendingPathComponent("docs")
        documents += try FileManager.default.contentsOfDirectory(at: docs, includingPropertiesForKeys: nil).filter { $0.pathExtension == "md" }
        return documents
    }

    /// The targets of `[text](target)` and `![alt](target)` links, outside code blocks.
    static func links(in markdown: String) -> [String] {
        var targets: [String] = []
        var inCode = false
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inCode.toggle()
                continue
            }
            guard !inCode else { continue }
            var rest = Substring(line)
            while let open = rest.range(of: "](") {
                let after = rest[open.upperBound...]
                guard let close = after.firstIndex(of: ")") else { break }
                targets.append(String(after[..<close]))
                rest = after[close...]
            }
        }
        return targets
    }

    func testEveryRelativeLinkResolvesInsideTheRepository() throws {
        for document in try Self.documents() {
            let text = try String(contentsOf: document, encoding: .utf8)
            let relative = Self.links(in: text).filter { !$0.contains("://") && !$0.hasPrefix("#") && !$0.hasPrefix("mailto:") }
            for link in relative {
                let path = String(link.split(separator: "#", maxSplits: 1).first ?? "")
                let target = document.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
                XCTAssertTrue(
                    target.path.hasPrefix(Self.root.standardizedFileURL.path + "/"), "\(document.lastPathComponent): \(link) leaves the repository")
                XCTAssertTrue(FileManager.default.fileExists(atPath: target.path), "\(document.lastPathComponent): \(link) does not exist")
            }
        }
    }

    func testTheLinkReaderFindsLinksAndSkipsCode() {
        XCTAssertEqual(
            Self.links(in: "see [a](docs/A.md) and ![b](x.png)\n```\n[c](nope)\n```\n[d](y.md#part)"), ["docs/A.md", "x.png", "y.md#part"])
    }

    func testTheReadmeIsAtMost150Lines() throws {
        let lines = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8).split(
            separator: "\n", omittingEmptySubsequences: false)
        XCTAssertLessThanOrEqual(lines.count, 150)
    }
}
