"""The class names a loaded or built Keras model holds (imports nothing,
so that a fresh process can use it without registering anything)."""


def held_classes(model):
    """Its layers' classes, its optimizer's (and the optimizers it wraps),
    and their learning-rate schedules'."""
    names = [type(layer).__name__ for layer in model._flatten_layers()]
    optimizer = getattr(model, "optimizer", None)
    while optimizer is not None:
        names.append(type(optimizer).__name__)
        rate = optimizer.get_config().get("learning_rate")
        if isinstance(rate, dict):
            names.append(rate["class_name"])
        optimizer = getattr(optimizer, "inner_optimizer", None)
    return names
