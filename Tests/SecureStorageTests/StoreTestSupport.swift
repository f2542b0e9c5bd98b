import Foundation
import XCTest

@testable import SecureStorage

/// A fresh temporary directory per test, removed afterwards.
func makeTemporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("ss-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// One protector shared by the tests of a case, so the scrypt cost is paid once per parameter set.
let testProtector = try! SoftwareKeyProtector(iterationCount: 1024)

extension XCTestCase {
    func temporaryLocation(name: String = "store") throws -> StoreLocation {
        let dir = try makeTemporaryDirectory()
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return StoreLocation(directory: dir, name: name)
    }

    func assertThrows<T>(_ expected: (SecureStorageError) -> Bool, _ body: () throws -> T, file: StaticString = #filePath, line: UInt = #line) {
        do {
            _ = try body()
            XCTFail("expected an error", file: file, line: line)
        } catch let error as SecureStorageError {
            XCTAssertTrue(expected(error), "unexpected error \(error)", file: file, line: line)
        } catch {
            XCTFail("unexpected error type \(error)", file: file, line: line)
        }
    }
}

func isTampered(_ e: SecureStorageError) -> Bool {
    if case .tampered = e { return true }
    return false
}
func fileBytes(_ location: StoreLocation) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: location.filePath))) }
func writeFileBytes(_ bytes: [UInt8], _ location: StoreLocation) throws { try Data(bytes).write(to: URL(fileURLWithPath: location.filePath)) }
