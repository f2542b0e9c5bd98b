import FuzzTargets
import XCTest

/// The committed seed corpus and every saved finding run through their targets without a finding: the fuzzers'
/// discoveries stay fixed in the ordinary test suite, which needs no libFuzzer build.
final class CorpusReplayTests: XCTestCase {
    private static let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    private func inputs(_ kind: String, _ target: FuzzTarget) -> [URL] {
        let folder = Self.fuzzFolder.appendingPathComponent(kind).appendingPathComponent(target.rawValue)
        let files = (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []
        return files.filter { !$0.lastPathComponent.hasPrefix(".") }.sorted { $0.path < $1.path }
    }

    func testEveryTargetHasCommittedSeeds() {
        for target in FuzzTarget.allCases {
            XCTAssertFalse(inputs("corpus", target).isEmpty, "no seeds for \(target.rawValue)")
        }
    }

    func testEveryCommittedSeedIsAcceptedSoMutationsStartDeep() throws {
        for target in FuzzTarget.allCases {
            for file in inputs("corpus", target) {
                let accepted = try target.run(Array(try Data(contentsOf: file)))
                XCTAssertTrue(accepted, file.path)
            }
        }
    }

    func testSavedFindingsStayFixed() throws {
        for target in FuzzTarget.allCases {
            for file in inputs("regressions", target) {
                XCTAssertNoThrow(try target.run(Array(try Data(contentsOf: file))), file.path)
            }
        }
    }

    func testFreshlyMadeSeedsAreAccepted() throws {
        for (target, seeds) in try FuzzSeeds.make() {
            for (name, bytes) in seeds {
                let accepted = try target.run(bytes)
                XCTAssertTrue(accepted, "\(target.rawValue)/\(name)")
            }
        }
    }
}
