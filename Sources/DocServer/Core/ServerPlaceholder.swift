// Replaced as the server core lands.
enum ServerPlaceholder {}
