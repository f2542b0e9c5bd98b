// The SDK is one import for an app: the runtime's vocabulary (models, errors, configuration, interaction, platforms)
// comes with the operations.
@_exported import MobileAuthenticationCore
