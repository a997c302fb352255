"""stub"""
class ToolguardMiddleware:
    pass
