import XCTest

@testable import FIDOServer
@testable import FIDOServerCore

/// `MAUTH_EVENT_LOOPS`: unset means one loop per core; a set value is a whole number of loops or a clear error.
final class EventLoopSettingTests: XCTestCase {
    func testUnsetLeavesTheDefault() throws {
        XCTAssertNil(try EventLoopSetting.count(nil))
    }

    func testAWholeNumberIsTheCount() throws {
        XCTAssertEqual(try EventLoopSetting.count("1"), 1)
        XCTAssertEqual(try EventLoopSetting.count(" 4 "), 4)
        XCTAssertEqual(try EventLoopSetting.count("1024"), 1024)
    }

    func testZeroIsRefused() { assertRefused("0") }
    func testANegativeCountIsRefused() { assertRefused("-2") }
    func testMoreThanTheMaximumIsRefused() { assertRefused("1025") }
    func testAWordIsRefused() { assertRefused("two") }
    func testAFractionIsRefused() { assertRefused("1.5") }
    func testAnEmptyValueIsRefused() { assertRefused("") }

    private func assertRefused(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try EventLoopSetting.count(text), file: file, line: line) { error in
            guard case .invalid(let message)? = error as? ServerConfiguration.ConfigurationError else {
                return XCTFail("\(error)", file: file, line: line)
            }
            XCTAssertTrue(message.contains("MAUTH_EVENT_LOOPS") && message.contains("\"\(text)\""), message, file: file, line: line)
        }
    }
}
